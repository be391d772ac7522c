package lease

import "github.com/google/uuid"

// Subscribers is how many subscriptions and waiting claims the notifier
// holds for a project (tests wait for a waiting claim to subscribe).
func (n *Notifier) Subscribers(project uuid.UUID) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	waiting := 0
	if q := n.queues[project]; q != nil {
		waiting = len(q.waiters)
	}
	return len(n.subs[project]) + waiting
}

// IdleWaiters is how many waiting claims of the project wait for a turn on
// the notifier.
func (n *Notifier) IdleWaiters(project uuid.UUID) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if q := n.queues[project]; q != nil {
		return q.idle.Len()
	}
	return 0
}
