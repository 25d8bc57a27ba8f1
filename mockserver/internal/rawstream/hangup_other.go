//go:build !linux

package rawstream

// Elsewhere than Linux every stream has its own reader goroutine.
func watchHangup(*Stream) bool { return false }

func forgetHangup(*Stream) {}
