package testenv

import "sync"

// CallLog records what a provider's Calls hook is told: how many calls of
// each name succeeded and failed.
type CallLog struct {
	mu         sync.Mutex
	ok, failed map[string]int
}

// Calls is the hook to give the provider.
func (l *CallLog) Calls(call string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ok == nil {
		l.ok, l.failed = map[string]int{}, map[string]int{}
	}
	if err != nil {
		l.failed[call]++
		return
	}
	l.ok[call]++
}

// OK is how many calls named call succeeded.
func (l *CallLog) OK(call string) int { l.mu.Lock(); defer l.mu.Unlock(); return l.ok[call] }

// Failed is how many calls named call failed.
func (l *CallLog) Failed(call string) int { l.mu.Lock(); defer l.mu.Unlock(); return l.failed[call] }
