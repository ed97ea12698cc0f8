package cli

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDemo runs the demo at a small size and checks that every order is
// accounted for by the three layers.
func TestDemo(t *testing.T) {
	o := DefaultDemoOptions()
	o.Orders = 50_000
	var out bytes.Buffer
	if err := Demo(context.Background(), &out, o); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`conservation: (\d+) in = (\d+) accepted \+ (\d+) side output \+ (\d+) dropped`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no conservation line in:\n%s", out.String())
	}
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
	if n(1) != o.Orders || n(1) != n(2)+n(3)+n(4) || n(3) == 0 || n(4) != 0 {
		t.Fatalf("conservation: %v\n%s", m, out.String())
	}
	for _, want := range []string{"layer 1", "layer 2", "layer 3"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

func TestMainUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"version"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "weir ") {
		t.Fatalf("version: %d %q", code, out.String())
	}
	if code := Main(context.Background(), []string{"nope"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "unknown command") {
		t.Fatalf("unknown command: %d %q", code, errb.String())
	}
}
