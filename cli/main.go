package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
)

// Version is weir's version.
const Version = "0.1.0-dev"

// Main runs the weir command line and returns the exit code: 0 ok, 1 the
// job failed, 2 bad usage.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "demo":
		fs := flag.NewFlagSet("demo", flag.ContinueOnError)
		fs.SetOutput(stderr)
		o := DefaultDemoOptions()
		fs.IntVar(&o.Orders, "orders", o.Orders, "number of orders to generate")
		fs.IntVar(&o.Users, "users", o.Users, "number of users")
		fs.IntVar(&o.Parallel, "parallelism", 0, "window parallelism (default: all cores)")
		if err := fs.Parse(args[1:]); err != nil {
			return 2
		}
		if err := Demo(ctx, stdout, o); err != nil {
			fmt.Fprintln(stderr, "weir demo:", err)
			return 1
		}
		return 0
	case "version":
		fmt.Fprintln(stdout, "weir", Version)
		return 0
	case "help", "-h", "--help":
		usage(stdout)
		return 0
	}
	fmt.Fprintf(stderr, "weir: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, `usage: weir <command>

commands:
  demo      run the built-in orders job on embedded defaults
  version   print the version`)
}
