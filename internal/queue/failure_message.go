package queue

import (
	"context"
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/store"
)

// maxFailureMessage bounds a task's error.message, in bytes.
const maxFailureMessage = 200

// defaultFailureMessages say why in a few words when the workflow gave no
// message of its own.
var defaultFailureMessages = map[dockettype.Code]string{
	dockettype.CodeWorkerPanic:      "the workflow panicked",
	dockettype.CodeWorkflowError:    "the workflow failed",
	dockettype.CodeInvalidInput:     "the workflow refused its input",
	dockettype.CodeUnknownWorkflow:  "the workflow is not registered on the node that ran the task",
	dockettype.CodeStoreUnavailable: "the store was unavailable while the workflow recorded evidence",
}

// failureMessage is the error.message of an attempt that ended with err
// and code (from classify): the workflow's own message (a
// *dockettype.Failure's), cleaned and bounded, or a fixed reason for the
// code. It goes to the store and to the task's tenant, never to a log.
func failureMessage(code dockettype.Code, err error) string {
	f, isFailure := errors.AsType[*dockettype.Failure](err)
	if isFailure {
		if msg := cleanMessage(f.Message); msg != "" {
			return msg
		}
	} else if code == dockettype.CodeWorkflowError {
		return "the workflow returned an unexpected error"
	}
	return defaultFailureMessages[code]
}

// cleanMessage makes a workflow's message safe to store and show: valid
// UTF-8, control characters as spaces, trimmed, at most maxFailureMessage
// bytes (cut at a character boundary).
func cleanMessage(msg string) string {
	msg = strings.ToValidUTF8(msg, "\uFFFD")
	msg = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, msg)
	msg = strings.TrimSpace(msg)
	if len(msg) <= maxFailureMessage {
		return msg
	}
	cut := maxFailureMessage
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return strings.TrimSpace(msg[:cut])
}

// logFailed logs a task that the finish made failed: its code and IDs
// only, never its message, input or result. A workflow's own code outside
// the closed set (demo.fail takes it from the task's input) is logged as
// workflow_error: a tenant may have chosen it.
func (c *completer) logFailed(ctx context.Context, r *finishRequest, state dockettype.State) {
	if r.item.Kind != store.FinishFail || state != dockettype.StateFailed {
		return
	}
	c.log.InfoContext(ctx, "task failed", "code", metrics.CodeLabel(r.item.Code),
		"task_id", r.item.TaskID, "tenant", r.tenant, "trace_id", r.traceID, "workflow", r.workflow)
}
