package fault

import "testing"

// FuzzParse: any input either fails with an error or yields a spec whose
// canonical form parses back to the same spec.
func FuzzParse(f *testing.F) {
	for _, e := range Vocabulary {
		f.Add(e.Example)
	}
	f.Add("slow-headers:2s,error-after:3;message=a%2Cb")
	f.Add("status:503;code=x;message=%E2%9C%93;retry-after=0")
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(in)
		if err != nil {
			return
		}
		again, err := Parse(s.String())
		if err != nil {
			t.Fatalf("canonical %q of %q does not parse: %v", s.String(), in, err)
		}
		if !same(s, again) {
			t.Fatalf("canonical %q of %q parses differently: %v vs %v", s.String(), in, describe(s), describe(again))
		}
	})
}
