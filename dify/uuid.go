package dify

// IsUUID reports whether s is a UUID in the canonical 8-4-4-4-12 hex form
// (any case): the form Dify writes its ids in and every route accepts
// (Werkzeug's uuid path converter takes no other; bodies go through
// Python's uuid.UUID, which takes this one too).
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}
