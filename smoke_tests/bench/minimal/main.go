// Command minimal is the floor the bench measures sortie's start against:
// a Go program that prints a line and exits, timed in the same run as
// `sortie --help`, so that cli_init is a ratio to what any Go command costs
// on the machine at that moment.
package main

import "os"

func main() { os.Stdout.WriteString("minimal\n") }
