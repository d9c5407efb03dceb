package node

import (
	"testing"
	"time"
)

func TestClockOffset(t *testing.T) {
	if _, ok := newClock(0).(offsetClock); ok {
		t.Fatal("a zero offset should give the real clock")
	}
	c := newClock(30 * time.Second)
	before := time.Now()
	got := c.Now()
	after := time.Now()
	if got.Before(before.Add(30*time.Second)) || got.After(after.Add(30*time.Second)) {
		t.Fatalf("Now() = %v, want 30 s past [%v, %v]", got, before, after)
	}
	if d := c.Until(after.Add(30 * time.Second)); d > 0 {
		t.Fatalf("Until(real now + 30 s) = %v, want <= 0 on a clock 30 s ahead", d)
	}
	if d := c.Since(before); d < 30*time.Second {
		t.Fatalf("Since(real now) = %v, want >= 30 s", d)
	}
}
