// Command skrip is the skrip server and its command-line client.
package main

import (
	"context"
	"os"

	"github.com/skrip-dev/skrip/internal/cli"
)

func main() {
	os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}
