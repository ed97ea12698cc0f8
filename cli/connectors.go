package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/weirstream/weir/connector"
)

// connectorsCmd lists the connector kinds a job spec may name (the
// registry's), with their settings: weir connectors [KIND...].
func connectorsCmd(args []string, o IO) int {
	kinds := connector.Default.Kinds()
	if len(args) > 0 {
		kinds = kinds[:0:0]
		for _, name := range args {
			k, ok := connector.Default.Lookup(name)
			if !ok {
				fmt.Fprintf(o.Stderr, "weir connectors: no kind %q; the kinds are %s\n", name, strings.Join(kindNames(connector.Default.Kinds()), ", "))
				return ExitUsage
			}
			kinds = append(kinds, k)
		}
	}
	w := tabwriter.NewWriter(o.Stdout, 0, 0, 2, ' ', 0)
	for i, k := range kinds {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s: %s\n", k.Name, k.Doc)
		if s := k.Source; s != nil {
			fmt.Fprintf(w, "  source (source.type: %s)%s\n", k.Name, abilities(s.Abilities))
			settings(w, "source.", s.Fields)
		}
		if s := k.Sink; s != nil {
			fmt.Fprintf(w, "  sink of %s (sinks.<output>.type: %s)\n", s.Roles, k.Name)
			if s.Roles&connector.RoleResults != 0 {
				fmt.Fprintf(w, "    results: %s\n", s.Abilities)
			}
			var records []string
			if s.Roles&connector.RoleLate != 0 {
				records = append(records, "late records")
			}
			if s.Roles&connector.RoleDeadLetters != 0 {
				records = append(records, "dead letters")
			}
			if len(records) > 0 {
				fmt.Fprintf(w, "    %s: %s\n", strings.Join(records, ", "), s.RecordAbilities)
			}
			settings(w, "", s.Fields)
		}
	}
	w.Flush()
	return ExitOK
}

func abilities(a connector.Ability) string {
	if a == 0 {
		return ""
	}
	return ": " + a.String()
}

func settings(w *tabwriter.Writer, prefix string, fs []connector.Field) {
	for _, f := range fs {
		req := ""
		if f.Required {
			req = " (required)"
		}
		fmt.Fprintf(w, "    %s%s\t%s%s\n", prefix, f.Name, f.Doc, req)
	}
}

func kindNames(ks []connector.Kind) []string {
	names := make([]string, len(ks))
	for i, k := range ks {
		names[i] = k.Name
	}
	return names
}
