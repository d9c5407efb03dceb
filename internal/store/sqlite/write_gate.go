package sqlite

import (
	"context"
	"sync"
)

// bypassAfter is how many foreground handoffs in a row may pass a waiting
// background writer before it gets its turn.
const bypassAfter = 8

// writeGate admits one write transaction at a time. SQLite has one writer;
// queueing writers here, in arrival order, is fairer and cheaper than letting
// them spin on SQLITE_BUSY. Foreground writers (the API, the online pool, the
// schedulers) go before waiting background writers (the offline pool), but a
// background writer never waits behind more than bypassAfter of them, so a
// flood of offline work cannot delay online work and online work cannot
// starve offline work.
type writeGate struct {
	mu       sync.Mutex
	busy     bool
	fg, bg   []chan struct{}
	bypassed int // foreground handoffs since a background waiter queued
}

func newWriteGate() *writeGate { return &writeGate{} }

// acquire waits for the gate. On a context error the caller does not hold it.
func (g *writeGate) acquire(ctx context.Context, background bool) error {
	g.mu.Lock()
	if !g.busy {
		g.busy = true
		g.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	if background {
		g.bg = append(g.bg, ch)
	} else {
		g.fg = append(g.fg, ch)
	}
	g.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	removed := remove(&g.fg, ch) || remove(&g.bg, ch)
	g.mu.Unlock()
	if !removed {
		// The gate was handed to us as the context ended: pass it on.
		g.release()
	}
	return ctx.Err()
}

// release hands the gate to the next waiter, or frees it.
func (g *writeGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	var next chan struct{}
	switch {
	case len(g.bg) > 0 && (len(g.fg) == 0 || g.bypassed >= bypassAfter):
		next, g.bg = g.bg[0], g.bg[1:]
		g.bypassed = 0
	case len(g.fg) > 0:
		next, g.fg = g.fg[0], g.fg[1:]
		if len(g.bg) > 0 {
			g.bypassed++
		}
	default:
		g.busy = false
		return
	}
	close(next) // the gate stays busy: it passes to next
}

func remove(list *[]chan struct{}, ch chan struct{}) bool {
	for i, c := range *list {
		if c == ch {
			*list = append((*list)[:i], (*list)[i+1:]...)
			return true
		}
	}
	return false
}
