// Command weir runs weir jobs. It only wires the process to package cli:
// the first Ctrl-C or SIGTERM (systemd, Docker, Kubernetes, timeout) asks
// the running job to stop gracefully, a second one of either kills the
// process.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/weirstream/weir/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // restore the defaults: the next Ctrl-C or SIGTERM kills the process
	}()
	fi, err := os.Stderr.Stat()
	terminal := err == nil && fi.Mode()&os.ModeCharDevice != 0
	os.Exit(cli.Main(ctx, os.Args[1:], cli.IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Terminal: terminal, Getenv: os.Getenv}))
}
