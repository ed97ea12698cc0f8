package doctor

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/monitor"
)

// Group rules D23 to D26 judge a group of members (weir run --instance)
// from one member's GroupStatus: a rebalance storm, a task without an
// owner, a slow restore and a partitioner mismatch.

// rebalanceStorm is how many assignment changes of one member within
// stormWindow make a storm.
const (
	rebalanceStorm = 5
	stormWindow    = 10 * time.Minute
	// slowRestore: a restore in progress this long is slow.
	slowRestore = 30 * time.Second
)

// diagnoseGroup runs the group rules on s.
func diagnoseGroup(s *monitor.GroupStatus) Report {
	r := Report{Quadrant: "healthy"}
	lag := int64(0)
	for _, t := range s.Tasks {
		lag += t.Lag
	}
	r.QuadrantWhy = fmt.Sprintf("group %s: %d members, %d tasks, %d input records behind the committed offsets", s.Group, len(s.Members), len(s.Tasks), lag)
	if h := s.Holder; h != nil {
		r.QuadrantWhy += fmt.Sprintf("; task %d (%s) holds the watermark", h.Task, ownerText(h.Owner))
	}
	for _, rule := range []func(*monitor.GroupStatus) []Finding{d23RebalanceStorm, d24NoOwner, d25SlowRestore, d26Partitioner} {
		r.Findings = append(r.Findings, rule(s)...)
	}
	for _, e := range s.Errors {
		r.Findings = append(r.Findings, Finding{Rule: "D0", Severity: Warning, Title: "part of the group could not be read from Kafka", Where: "member " + s.Instance,
			Evidence: e, Fix: "check the brokers and the member's access to the group"})
	}
	if r.Worst() >= Warning {
		r.Quadrant = "the group is not healthy: see the findings"
	}
	return r
}

func ownerText(o string) string {
	if o == "" {
		return "no owner"
	}
	return "on member " + o
}

// D23: the member's tasks changed many times in a short while: members
// join and leave again and again (a crash loop, heartbeats missed on a
// busy machine), and each change pauses the moved tasks.
func d23RebalanceStorm(s *monitor.GroupStatus) []Finding {
	n := 0
	for _, at := range s.Rebalances {
		if s.At.Sub(at) <= stormWindow {
			n++
		}
	}
	if n < rebalanceStorm {
		return nil
	}
	return []Finding{{Rule: "D23", Severity: Warning, Title: "a rebalance storm: the group's tasks keep moving", Where: "member " + s.Instance,
		Evidence: fmt.Sprintf("%d changes of this member's tasks in the last %v (%d members now)", n, stormWindow, len(s.Members)),
		Fix:      "find the member that restarts (its log, its exit codes); on busy machines raise group.session_timeout so that heartbeats are not missed; start members once, not in a loop"}}
}

// D24: a task that no member runs: its partition is not read, its
// windows do not fire, and the group's watermark waits for it.
func d24NoOwner(s *monitor.GroupStatus) []Finding {
	var none []string
	for _, t := range s.Tasks {
		if t.Owner == "" && !t.Done {
			none = append(none, fmt.Sprint(t.Task))
		}
	}
	if len(none) == 0 {
		return nil
	}
	if len(s.Members) == 0 {
		return []Finding{{Rule: "D24", Severity: Critical, Title: "no member runs the group's tasks", Where: "group " + s.Group,
			Evidence: fmt.Sprintf("tasks %s have no owner and the broker lists no member", strings.Join(none, ", ")),
			Fix:      "start members (weir run JOB.yaml --instance NAME --state-dir DIR); a member that just died is replaced after group.session_timeout"}}
	}
	return []Finding{{Rule: "D24", Severity: Critical, Title: "tasks without an owner", Where: "tasks " + strings.Join(none, ", "),
		Evidence: fmt.Sprintf("%d members run %d of %d tasks", len(s.Members), len(s.Tasks)-len(none), len(s.Tasks)),
		Fix:      "a rebalance is under way, or a member left without the group noticing yet (group.session_timeout); if it lasts, restart the members"}}
}

// D25: a restore in progress for long, or a restore that read slowly.
func d25SlowRestore(s *monitor.GroupStatus) []Finding {
	var out []Finding
	for _, r := range s.Restores {
		d := time.Duration(r.Seconds * float64(time.Second))
		if r.InProgress && d >= slowRestore {
			out = append(out, Finding{Rule: "D25", Severity: Warning, Title: "a slow restore: the task waits for its state", Where: fmt.Sprintf("task %d on member %s", r.Task, s.Instance),
				Evidence: fmt.Sprintf("restoring for %v", d.Round(time.Second)),
				Fix:      "keep each member's --state-dir across restarts and restart under the same --instance (it restores from there); check the brokers' throughput to the member"})
		}
	}
	return out
}

// D26: keys in the wrong partitions: a producer that does not use
// Kafka's default partitioner, or partitions added to the input since
// the group started (keys then map to other partitions, and one key's
// windows split across tasks).
func d26Partitioner(s *monitor.GroupStatus) []Finding {
	var out []Finding
	if s.InputPartitions > 0 && s.StatePartitions > 0 && s.InputPartitions != s.StatePartitions {
		out = append(out, Finding{Rule: "D26", Severity: Critical, Title: "the input's partition count changed: keys now map to other partitions", Where: "topic " + s.Topic,
			Evidence: fmt.Sprintf("the input has %d partitions, the group's state %d", s.InputPartitions, s.StatePartitions),
			Fix:      "a group's input keeps its partition count: reset the group (weir reset) and run it again over a topic with the new count"})
	}
	if len(s.Mismatches) > 0 {
		out = append(out, Finding{Rule: "D26", Severity: Critical, Title: "records in partitions their key does not belong in (partitioned_by_key)", Where: "member " + s.Instance,
			Evidence: s.Mismatches[len(s.Mismatches)-1],
			Fix:      "produce with Kafka's default partitioner (murmur2; kcat: -X partitioner=murmur2_random) into a new topic, then reset the group (weir reset)"})
	}
	return slices.Clip(out)
}
