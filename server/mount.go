package server

import "context"

// mount builds the domain services and mounts the API and the web UI.
func (s *Server) mount(ctx context.Context) error {
	return nil
}
