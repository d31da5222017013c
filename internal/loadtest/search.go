package loadtest

import (
	"context"
	"fmt"
)

// Search is Find's answer: every run it made, in order, and the largest
// number of streams whose run was good (Result.Good: every stream
// complete and valid, none starved, none refused).
type Search struct {
	Runs []*Result `json:"runs"`
	// Largest is the answer (0: even one stream was not good).
	Largest int `json:"largest_without_starving"`
	// Max is the most streams the search would try; Largest equal to it
	// means the server may take more.
	Max int `json:"max_streams"`
}

// Find checks the server, then searches for the largest number of
// concurrent streams, up to most, that all play without starving: it
// doubles N from 1 until a run is not good (a stream starved, was
// refused or failed) or N reaches most, then bisects between the last good
// N and the first bad one. each, when set, hears every run as it ends.
func Find(ctx context.Context, o Options, most int, each func(*Result)) (*Search, error) {
	o.defaults()
	if most < 1 {
		return nil, fmt.Errorf("loadtest: a search up to %d streams: want at least 1", most)
	}
	if err := Check(ctx, o); err != nil {
		return nil, err
	}
	s := &Search{Max: most}
	largest, err := search(most, func(n int) (bool, error) {
		r, err := run(ctx, o, n)
		if err != nil {
			return false, err
		}
		s.Runs = append(s.Runs, r)
		if each != nil {
			each(r)
		}
		return r.Good(), nil
	})
	if err != nil {
		return nil, err
	}
	s.Largest = largest
	return s, nil
}

// search finds the largest n in [1, most] for which good holds, assuming
// it holds up to some n and not beyond: doubling, then bisecting. It
// returns 0 when good(1) does not hold.
func search(most int, good func(n int) (bool, error)) (int, error) {
	lo, hi := 0, 0 // the largest good n tried; the smallest bad one (0: none yet)
	for n := 1; ; n = min(2*n, most) {
		ok, err := good(n)
		if err != nil {
			return 0, err
		}
		if !ok {
			hi = n
			break
		}
		lo = n
		if n == most {
			return lo, nil
		}
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		ok, err := good(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}
