// Command xcaddy-build builds a release Caddy binary with the reasoning
// relay from the pinned recipe in xcaddy.json, using xcaddy's own library
// (github.com/caddyserver/xcaddy): the recipe's fields are those of
// xcaddy's Builder struct, so nothing here decides how Caddy is built.
//
// Usage, from the repository root:
//
//	go run ./caddymodule/cmd/xcaddy-build -o ./caddy
//
// Relative replacement paths in the recipe are resolved against the
// recipe's directory, as the xcaddy command resolves them against the
// working directory.
//
// The module is not published, so the recipe pins the zero pseudo-version
// that Go uses for replaced modules and replaces exactly that version with
// the local tree. A module proxy that answers 403 (rather than 404) for an
// unknown path would still fail the lookup of the plugin package, so the
// build runs with GOPROXY's list joined by "|" (fall through on any error)
// and ending in "off": a lookup no proxy can answer then resolves to the
// replacement, and every other module still comes from your proxies. Environment variables that xcaddy honours
// (XCADDY_GO_BUILD_FLAGS, XCADDY_RACE_DETECTOR, …) apply as usual;
// CGO_ENABLED stays off unless set, which the pure-Go SQLite driver needs
// no cgo for.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/caddyserver/xcaddy"
)

func main() {
	recipe := flag.String("recipe", "xcaddy.json", "path of the build recipe (xcaddy Builder fields as JSON)")
	output := flag.String("o", "caddy", "path of the binary to write")
	flag.Parse()
	if err := run(*recipe, *output); err != nil {
		log.Fatalf("xcaddy-build: %v", err)
	}
}

func run(recipe, output string) error {
	b, err := loadRecipe(recipe)
	if err != nil {
		return err
	}
	if err := os.Setenv("GOPROXY", fallthroughProxy()); err != nil {
		return fmt.Errorf("setting GOPROXY: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := b.Build(ctx, output); err != nil {
		return fmt.Errorf("building %s: %w", output, err)
	}
	fmt.Printf("built %s (Caddy %s)\n", output, b.CaddyVersion)
	return nil
}

// fallthroughProxy returns the configured GOPROXY list with every proxy
// falling through to the next on any error and a final "off".
func fallthroughProxy() string {
	list := os.Getenv("GOPROXY")
	if list == "" {
		out, err := exec.Command("go", "env", "GOPROXY").Output()
		if err == nil {
			list = strings.TrimSpace(string(out))
		}
	}
	if list == "" || list == "off" {
		return "off"
	}
	if strings.HasSuffix(list, "|off") {
		return list
	}
	return strings.ReplaceAll(list, ",", "|") + "|off"
}

// loadRecipe reads an xcaddy.Builder from path, refusing unknown fields,
// and makes relative replacement paths absolute.
func loadRecipe(path string) (*xcaddy.Builder, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading recipe: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var b xcaddy.Builder
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("parsing recipe %s: %w", path, err)
	}
	if b.CaddyVersion == "" {
		return nil, fmt.Errorf("recipe %s: caddy_version is required", path)
	}
	base, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("resolving recipe directory: %w", err)
	}
	for i, r := range b.Replacements {
		n := string(r.New)
		if strings.HasPrefix(n, ".") {
			b.Replacements[i].New = xcaddy.ReplacementPath(filepath.Join(base, n))
		}
	}
	return &b, nil
}
