package pydantic

import (
	"strings"
	"testing"
)

// TestNumeric: the expectations are Python's
// str(Decimal(v).quantize(Decimal("1E-7"), rounding=ROUND_HALF_UP)), what a
// Numeric(10, 7) column gives back and pydantic's JSON mode writes.
func TestNumeric(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"0", "0E-7"},
		{"0.0", "0E-7"},
		{"0.0012890", "0.0012890"},
		{"0.001289", "0.0012890"},
		{"0.00000005", "1E-7"},
		{"0.00000004", "0E-7"},
		{"0.0000001", "1E-7"},
		{"0.0000012", "0.0000012"},
		{"-0.0012345678", "-0.0012346"},
		{"12.5", "12.5000000"},
		{"1.2e-05", "0.0000120"},
		{"999.99999999", "1000.0000000"},
		{"0.00000015", "2E-7"},
		{"not a number", "not a number"},
	} {
		if got := Numeric(c.in, 7); got != c.want {
			t.Errorf("Numeric(%q, 7) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzNumeric holds the plain-decimal path to the big.Rat one it skips.
func FuzzNumeric(f *testing.F) {
	for _, s := range []string{"0", "0.0", "0.0012890", "-0.0", "-12.5", "007.10", "1.", ".5", "+1", "1e3", "0.00000001", " 3.25 ", "99999999999999999999.1234567"} {
		f.Add(s, 7)
	}
	f.Fuzz(func(t *testing.T, v string, scale int) {
		scale = scale & 31
		want := ratNumeric(v, scale)
		if got, ok := plainNumeric(strings.TrimSpace(v), scale); ok && got != want {
			t.Fatalf("plainNumeric(%q, %d) = %q, big.Rat gives %q", v, scale, got, want)
		}
		if got := Numeric(v, scale); got != want {
			t.Fatalf("Numeric(%q, %d) = %q, want %q", v, scale, got, want)
		}
	})
}
