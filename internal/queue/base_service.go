package queue

import (
	"log/slog"

	"github.com/jonboulle/clockwork"
)

// baseService is what every component of the queue is handed (River's
// baseservice): a logger that names the component once, under the key
// "component", and the clock. Everything else a component uses comes
// through its own constructor; no component holds the Service.
type baseService struct {
	name  string
	log   *slog.Logger
	clock clockwork.Clock
}

// newBaseService names a component. logger is the root logger (one that
// carries no component yet), so that no log line has the key twice; attrs
// are further fixed fields of the component (e.g. its pool).
func newBaseService(logger *slog.Logger, clock clockwork.Clock, name string, attrs ...any) baseService {
	return baseService{
		name:  name,
		log:   logger.With(append([]any{"component", name}, attrs...)...),
		clock: clock,
	}
}
