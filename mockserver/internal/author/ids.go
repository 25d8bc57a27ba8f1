package author

import (
	"crypto/sha256"
	"fmt"
	"strings"
)

// deriveID returns a UUIDv4-shaped id computed from the scenario name and a
// purpose, so every regeneration of a cassette yields the same ids (the mock
// rewrites them on replay anyway, docs/api §2.5 ids are opaque to clients).
func deriveID(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
