package docket

import (
	"io"
	"log/slog"

	"github.com/docket-dev/docket/internal/node"
)

// NewLogger returns Docket's production logger: JSON lines at Info. As a
// last line of defence it redacts any attribute whose value is an error, so
// a database error's text can never reach the log even if a call site
// passes one by mistake; call sites log codes instead.
func NewLogger(w io.Writer) *slog.Logger { return node.NewLogger(w) }
