package bench

import (
	"fmt"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
)

func TestPercentileMS(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	tests := []struct {
		lat  []time.Duration
		p    float64
		want float64
	}{
		{nil, 0.5, 0},
		{ms(7), 0.99, 7},
		{ms(1, 2, 3, 4), 0.5, 2},
		{ms(hundred...), 0.5, 50},
		{ms(hundred...), 0.99, 99},
		{ms(hundred...), 1, 100},
	}
	for _, tt := range tests {
		if got := percentileMS(tt.lat, tt.p); got != tt.want {
			t.Errorf("percentileMS(%d values, %v) = %v, want %v", len(tt.lat), tt.p, got, tt.want)
		}
	}
}

func TestAdmissionToFinishWindow(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) *time.Time { v := t0.Add(time.Duration(s) * time.Second); return &v }
	task := func(created, finished int) *dockettype.Task {
		tk := &dockettype.Task{CreatedAt: *at(created)}
		if finished >= 0 {
			tk.FinishedAt = at(finished)
		}
		return tk
	}
	ts := []*dockettype.Task{task(0, 5), task(2, 3), task(4, 20), task(6, -1), task(1, 2)}
	if got := fmt.Sprint(admissionToFinish(ts, time.Time{}, time.Time{})); got != "[1s 1s 5s 16s]" {
		t.Errorf("all = %s", got)
	}
	// Admitted from 1s, finished by 10s.
	if got := fmt.Sprint(admissionToFinish(ts, *at(1), *at(10))); got != "[1s 1s]" {
		t.Errorf("window = %s", got)
	}
}

func TestSampleStaysBounded(t *testing.T) {
	s := newSample(10)
	for i := range 1000 {
		s.add("t", fmt.Sprint(i))
	}
	if len(s.ids) != 10 || s.seen != 1000 {
		t.Fatalf("sample holds %d of %d seen", len(s.ids), s.seen)
	}
	// Uniform: the sample is not just the first ten.
	late := 0
	for _, ref := range s.ids {
		var n int
		fmt.Sscan(ref.id, &n)
		if n >= 10 {
			late++
		}
	}
	if late == 0 {
		t.Errorf("sample = %v: only the first IDs", s.ids)
	}
}
