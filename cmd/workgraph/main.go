// Command workgraph is the workgraph server and its command-line client.
package main

import (
	"os"

	"github.com/workgraph-dev/workgraph/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
