// Command fake-upstream serves the fake OpenAI Responses API of package
// fakeupstream on a TCP address, for the load harness and manual runs.
//
//	fake-upstream -listen 127.0.0.1:0 -api-key sk-test -delay 5ms
//
// It prints the bound address (host:port) on the first line of stdout and
// shuts down cleanly on SIGINT or SIGTERM.
package main

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/fakeupstream"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fake-upstream:", err)
		os.Exit(1)
	}
}

// run parses flags, serves until ctx ends, then shuts the server down.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fake-upstream", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on (port 0 picks a free port)")
	apiKey := fs.String("api-key", "sk-fake-upstream", "bearer token clients must send")
	delay := fs.Duration("delay", 0, "pause between SSE events")
	secretHex := fs.String("secret", "", "hex key for reasoning ciphertext (random when empty)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if *apiKey == "" {
		return errors.New("-api-key must not be empty")
	}
	var secret []byte
	if *secretHex != "" {
		var err error
		if secret, err = hex.DecodeString(*secretHex); err != nil {
			return fmt.Errorf("-secret: %w", err)
		}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", *listen, err)
	}
	srv := &http.Server{
		Handler:           fakeupstream.New(fakeupstream.Options{APIKey: *apiKey, Secret: secret, Delay: *delay}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	fmt.Fprintln(stdout, ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
