package mockserver

// WaitLiveSaves waits until the live turns' saves that have started
// (chat_upstream.go) are done, so a test need not poll for them.
func WaitLiveSaves(s *Server) {
	for _, a := range s.apps {
		a.liveSaves.Wait()
	}
}
