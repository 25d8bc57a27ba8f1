package main

import "sync"

// forEach calls fn(i) for every i in [from, to) with conc calls in flight
// and returns the first error; after an error no new calls start. The
// seeding steps (conversations, annotations) share it.
func forEach(from, to, conc int, fn func(i int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	next := make(chan int)
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
			}
		}()
	}
	for i := from; i < to; i++ {
		select {
		case next <- i:
		case err := <-errs:
			close(next)
			wg.Wait()
			return err
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}
