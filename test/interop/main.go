// Command interop is chunkfs's independent decoder for the golden vectors (spec §13,
// §14: "All golden vectors G1-G8 pass in two independent decoders"). It is written from
// RUSTFS-SPEC-CHUNK-001, DESIGN.md §3 and notes/vectors.md only, and shares no code with
// the TypeScript implementation. Build offline from Debian packages:
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o build/interop ./test/interop
//	build/interop testdata/chunk
//
// Prints one line per vector ("G1 ok (...)") and a final line; exits 1 on any
// disagreement, 2 on usage errors.
package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// requiredVectors is the §13 minimum set; a missing one is a failure.
var requiredVectors = []string{"G1", "G2", "G3", "G4", "G5", "G6", "G7", "G8"}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: interop <testdata/chunk>")
		os.Exit(2)
	}
	if err := selfCheck(); err != nil {
		fmt.Printf("interop: FAILED self-check of the Go libraries: %v\n", err)
		os.Exit(1)
	}
	os.Exit(run(os.Args[1]))
}

func run(root string) int {
	dirs, err := vectorDirs(root)
	if err != nil || len(dirs) == 0 {
		fmt.Printf("interop: FAILED: no vector directories %s/G*/ (%v)\n", root, err)
		return 1
	}
	all := map[string]*vector{}
	failures := 0
	var order []string
	seen := map[string]bool{}
	for _, d := range dirs {
		seen[filepath.Base(d)] = true
		v, err := loadVector(d)
		if err != nil {
			fmt.Printf("%s FAIL: cannot load: %v\n", filepath.Base(d), err)
			failures++
			continue
		}
		all[v.name] = v
		order = append(order, v.name)
	}
	for _, name := range order {
		verdict, err := checkVector(all[name], all)
		if err != nil {
			fmt.Printf("%s FAIL: %v\n", name, err)
			failures++
			continue
		}
		for _, w := range verdict.warnings {
			fmt.Fprintf(os.Stderr, "%s warning: %s\n", name, w)
		}
		fmt.Printf("%s ok (%s)\n", name, verdict.summary)
	}
	for _, name := range requiredVectors {
		if !seen[name] {
			fmt.Printf("%s FAIL: vector missing from %s\n", name, root)
			failures++
		}
	}
	if failures > 0 {
		fmt.Printf("interop: FAILED: %d disagreement(s) in %s\n", failures, root)
		return 1
	}
	fmt.Printf("interop: all %d vectors agree with the independent Go decoder\n", len(order))
	return 0
}
