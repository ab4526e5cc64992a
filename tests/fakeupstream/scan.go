package fakeupstream

// Scan calls f with every request recorded so far, in arrival order,
// without copying them: a load test tallies thousands of large requests
// this way where Requests would copy every body. It holds the fake's lock
// while f runs, so f must be quick, must not call the Server, and must not
// modify the request or keep it or any of its slices after it returns.
func (s *Server) Scan(f func(r *Request)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.reqs {
		f(r)
	}
}
