package node

import (
	"io"
	"log/slog"
)

// NewLogger returns Docket's production logger: JSON lines at Info. As a
// last line of defence it redacts any attribute whose value is an error, so
// a database error's text can never reach the log even if a call site
// passes one by mistake; call sites log codes instead.
func NewLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: slog.LevelInfo,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Value.Kind() == slog.KindAny {
				if _, ok := a.Value.Any().(error); ok {
					return slog.String(a.Key, "[redacted]")
				}
			}
			return a
		},
	}))
}
