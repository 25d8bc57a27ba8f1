package bufpool

import "testing"

func TestGetGivesRoomAndPutBoundsWhatIsKept(t *testing.T) {
	p := Get(10)
	if len(*p) != 0 || cap(*p) < minSize {
		t.Fatalf("Get(10): len %d cap %d, want an empty buffer of at least %d", len(*p), cap(*p), minSize)
	}
	*p = append(*p, "dirty"...)
	Put(p)
	if q := Get(100); len(*q) != 0 {
		t.Fatalf("a reused buffer came back with %d bytes in it", len(*q))
	}
	big := Get(maxPooled + 1)
	if cap(*big) < maxPooled+1 {
		t.Fatalf("Get(%d) has cap %d", maxPooled+1, cap(*big))
	}
	Put(big) // dropped, not pooled: nothing to observe but no panic
}
