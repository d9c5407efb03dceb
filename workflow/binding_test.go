package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/workflow"
)

// A Binding made outside Docket is empty and cannot record evidence: only
// the server builds bindings with an evidence sink.
func TestBindingMadeOutsideDocketRecordsNothing(t *testing.T) {
	t.Parallel()
	for name, b := range map[string]*workflow.Binding{"zero": new(workflow.Binding), "nil": nil} {
		if name == "zero" && (b.TaskID() != "" || b.Tenant() != "" || b.Attempt() != 0 || !b.Deadline().IsZero()) {
			t.Errorf("a zero binding carries facts: task %q tenant %q", b.TaskID(), b.Tenant())
		}
		err := b.RecordEvidence(context.Background(), dockettype.EvidenceItem{Kind: "note", Body: json.RawMessage(`{}`)})
		if !errors.Is(err, dockettype.ErrNoEvidenceSink) {
			t.Errorf("%s binding: RecordEvidence = %v, want ErrNoEvidenceSink", name, err)
		}
	}
}
