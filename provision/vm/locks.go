package vm

import "sync"

// NameLocks serialises work on one name, such as the launch of a cluster,
// within this process. A name's lock is kept only while someone holds or
// waits for it. The zero value is ready to use.
type NameLocks struct {
	mu    sync.Mutex
	locks map[string]*nameLock
}

type nameLock struct {
	mu   sync.Mutex
	refs int
}

// Lock holds name's lock until the returned func is called.
func (l *NameLocks) Lock(name string) (unlock func()) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*nameLock{}
	}
	n, ok := l.locks[name]
	if !ok {
		n = &nameLock{}
		l.locks[name] = n
	}
	n.refs++
	l.mu.Unlock()
	n.mu.Lock()
	return func() {
		n.mu.Unlock()
		l.mu.Lock()
		defer l.mu.Unlock()
		if n.refs--; n.refs == 0 {
			delete(l.locks, name)
		}
	}
}
