package lease

import "github.com/google/uuid"

// Subscribers is how many observers and waiting claims the notifier holds
// for a project (tests wait for a waiting claim to subscribe).
func (n *Notifier) Subscribers(project uuid.UUID) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	waiting := 0
	if q := n.projects[project]; q != nil {
		waiting = q.waiters.Len()
	}
	return len(n.subs[project]) + waiting
}

// Idle is how many of the project's waiting claims wait for a wake-up
// (none of them claiming).
func (n *Notifier) Idle(project uuid.UUID) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	idle := 0
	if q := n.projects[project]; q != nil {
		for e := q.waiters.Front(); e != nil; e = e.Next() {
			if !e.Value.(*waiter).busy {
				idle++
			}
		}
	}
	return idle
}
