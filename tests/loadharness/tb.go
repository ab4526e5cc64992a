package main

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
)

// programTB implements relaytest.TB for a program: Fatalf records the
// failure and ends the calling goroutine (as testing.T.FailNow does), and
// do runs a function in its own goroutine and turns that into an error.
type programTB struct {
	log io.Writer

	mu       sync.Mutex
	err      error
	cleanups []func()
}

// Helper does nothing: there is no test output to attribute lines in.
func (p *programTB) Helper() {}

// Fatalf records the failure and stops the calling goroutine, which must
// be one started by do.
func (p *programTB) Fatalf(format string, args ...any) {
	p.mu.Lock()
	if p.err == nil {
		p.err = fmt.Errorf(format, args...)
	}
	p.mu.Unlock()
	runtime.Goexit()
}

// Logf writes a line to the log writer.
func (p *programTB) Logf(format string, args ...any) {
	fmt.Fprintf(p.log, format+"\n", args...)
}

// Cleanup registers f to run when close is called, last registered first.
func (p *programTB) Cleanup(f func()) {
	p.mu.Lock()
	p.cleanups = append(p.cleanups, f)
	p.mu.Unlock()
}

// Failed reports whether Fatalf was called.
func (p *programTB) Failed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err != nil
}

// do runs f in a new goroutine, waits for it and returns the failure f
// reported through Fatalf, if any.
func (p *programTB) do(f func()) error {
	done := make(chan struct{})
	finished := false
	go func() {
		defer close(done)
		f()
		finished = true
	}()
	<-done
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err
	}
	if !finished {
		return errors.New("loadharness: setup stopped without reporting why")
	}
	return nil
}

// close runs the registered cleanups in reverse order.
func (p *programTB) close() {
	p.mu.Lock()
	fs := p.cleanups
	p.cleanups = nil
	p.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
