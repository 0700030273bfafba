//go:build ignore

// zipmod writes a module zip for a file:// GOPROXY (provider-mirror_test.sh):
//
//	go run zipmod.go OUT.zip MODULE@VERSION
//
// Every regular file under ./MODULE@VERSION goes into the zip under that prefix.
package main

import (
	"archive/zip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go run zipmod.go OUT.zip MODULE@VERSION")
		os.Exit(2)
	}
	if err := write(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "zipmod:", err)
		os.Exit(1)
	}
}

func write(out, root string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		w, err := zw.Create(filepath.ToSlash(path))
		if err != nil {
			return err
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(w, src)
		return err
	})
	if err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return f.Close()
}
