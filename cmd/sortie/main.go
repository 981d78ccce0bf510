// Command sortie launches managed jobs on cloud clusters and keeps them alive.
package main

import (
	"os"

	"sortie/cmd/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
