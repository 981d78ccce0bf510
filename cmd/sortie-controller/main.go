// Command sortie-controller is the controller program: it reconciles the jobs
// of one SORTIE_HOME and is the only program that links the cloud SDKs, apart
// from sortie-sync's storage clients. The sortie CLI starts it in the
// background when needed.
package main

import (
	"os"

	"sortie/cmd/internal/controllercli"
)

func main() {
	os.Exit(controllercli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
