package lease

import "github.com/google/uuid"

// Subscribers is how many subscriptions the notifier holds for a project
// (tests wait for a waiting claim to subscribe).
func (n *Notifier) Subscribers(project uuid.UUID) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.subs[project])
}
