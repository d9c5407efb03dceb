//go:build unix

package faultcheck

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
)

// ScenarioAmbiguous drops the answers of committed submits.
const ScenarioAmbiguous = "ambiguous-commit"

// ambiguousCommit puts an HTTP proxy (ResponseDropper) between the clients
// and the server that forwards a quarter of the submits, lets them commit,
// then drops the answer and resets the connection: the client is told its
// submit failed; it retries with the same key and must get the same task.
// No server is killed, frozen or cut off.
type ambiguousCommit struct {
	dropper *ResponseDropper
}

func newAmbiguousCommit() Scenario { return &ambiguousCommit{} }

func (*ambiguousCommit) Name() string { return ScenarioAmbiguous }

func (*ambiguousCommit) Needs(string) string { return "" }

func (a *ambiguousCommit) Setup(_ context.Context, r *rig) error {
	if err := r.addNode(nodeConfig{}); err != nil {
		return err
	}
	tenantOf := map[string]string{}
	for t, k := range r.keys {
		tenantOf[k] = t
	}
	d, err := NewResponseDropper("http://"+r.nodes[0].Addr, r.hist, tenantOf, r.seed)
	if err != nil {
		return err
	}
	a.dropper = d
	r.endpoints = []string{d.URL()}
	r.stayUp = true
	return nil
}

func (a *ambiguousCommit) Inject(ctx context.Context, _ *rig, _ *mrand.Rand) error {
	a.dropper.SetRate(0.25)
	<-ctx.Done()
	a.dropper.SetRate(0)
	return nil
}

func (a *ambiguousCommit) Heal(r *rig) error {
	if a.dropper != nil {
		a.dropper.SetRate(0)
		r.note(fmt.Sprintf("%d answers dropped after their submits committed", a.dropper.Dropped()))
	}
	return nil
}

func (a *ambiguousCommit) Close(*rig) {
	if a.dropper != nil {
		_ = a.dropper.Close()
	}
}
