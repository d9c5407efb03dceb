package queue

import "sync"

// waiters wakes long polls (GET ?wait=) when a task this node finished
// becomes terminal. Tasks finished by other nodes are seen by the poll's
// periodic re-read.
type waiters struct {
	mu sync.Mutex
	m  map[string][]chan struct{}
}

func newWaiters() *waiters { return &waiters{m: map[string][]chan struct{}{}} }

func (w *waiters) subscribe(taskID string) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	w.mu.Lock()
	w.m[taskID] = append(w.m[taskID], ch)
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		list := w.m[taskID]
		for i, c := range list {
			if c == ch {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(w.m, taskID)
		} else {
			w.m[taskID] = list
		}
	}
}

func (w *waiters) notify(taskID string) {
	w.mu.Lock()
	list := w.m[taskID]
	delete(w.m, taskID)
	w.mu.Unlock()
	for _, ch := range list {
		close(ch)
	}
}
