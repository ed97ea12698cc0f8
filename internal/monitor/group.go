package monitor

import "time"

// GroupStatus is a job's group (weir run --instance) as one member sees
// it: the whole group from Kafka (its members, their tasks, each task's
// committed position and watermark) and this member's own events. Any
// member serves it (/api/v1/snapshot); weir doctor reads it.
type GroupStatus struct {
	Group    string `json:"group"`
	Job      string `json:"job"`
	Run      int64  `json:"run"`
	SpecHash string `json:"spec_hash"`
	Topic    string `json:"topic"`
	// Repartition is the repartition topic of a two-stage job ("": the
	// input is partitioned by key); its partition r is task
	// StatePartitions+r.
	Repartition string `json:"repartition,omitempty"`
	// InputPartitions is the input topic's partition count now;
	// StatePartitions the group's (the input's when the member started,
	// which the changelog's count checks). They differ when partitions
	// were added to the input since: keys then map to other partitions.
	InputPartitions int `json:"input_partitions"`
	StatePartitions int `json:"state_partitions"`
	// Instance is the member that answered; At when.
	Instance string    `json:"instance"`
	At       time.Time `json:"at"`
	// Members are the group's members with their tasks.
	Members []GroupMember `json:"members"`
	// Tasks are every task of the group, by number.
	Tasks []GroupTask `json:"tasks"`
	// Holder is the task (not done, its partition not empty) with the
	// lowest committed watermark (none lowest): each task's windows fire
	// by its own watermark, so the holder's fire last (nil: none).
	Holder *GroupTask `json:"holder"`
	// Rebalances are when this member's assignment changed (newest
	// last, at most 100).
	Rebalances []time.Time `json:"rebalances"`
	// Restores are this member's task restores (newest last, at most
	// 100), those in progress included.
	Restores []GroupRestore `json:"restores"`
	// Committed and Aborted count this member's transactions.
	Committed int64 `json:"transactions_committed"`
	Aborted   int64 `json:"transactions_aborted"`
	// Mismatches are records this member found in a partition Kafka's
	// default partitioner does not put their key in (partitioned_by_key).
	Mismatches []string `json:"partitioner_mismatches"`
	// Errors say what of the view could not be read from Kafka.
	Errors []string `json:"errors"`
}

// GroupMember is one member of a group.
type GroupMember struct {
	Instance string  `json:"instance"`
	Host     string  `json:"host"`
	Tasks    []int32 `json:"tasks"`
}

// GroupTask is one task of a group.
type GroupTask struct {
	Task int32 `json:"task"`
	// Owner is the member running it ("": none).
	Owner string `json:"owner"`
	// Committed is the input offset the group committed for it (-1:
	// none yet); End the partition's end offset; Lag their difference.
	Committed int64 `json:"committed"`
	End       int64 `json:"end"`
	Lag       int64 `json:"lag"`
	// Checkpoint is the id of its committed checkpoint (0: none).
	Checkpoint int64 `json:"checkpoint"`
	// WatermarkMS is its committed watermark (nil: none yet, with
	// WatermarkWhy).
	WatermarkMS  *int64 `json:"watermark_ms"`
	WatermarkWhy string `json:"watermark_why,omitempty"`
	// Done: it read its input to the end (stop_at_end).
	Done bool `json:"done"`
}

// GroupRestore is one restore of a task's state on this member.
type GroupRestore struct {
	Task int32 `json:"task"`
	// From is "changelog" or "state_dir" ("" while in progress).
	From    string    `json:"from"`
	Started time.Time `json:"started"`
	// Seconds it took (so far, InProgress).
	Seconds    float64 `json:"seconds"`
	Records    int64   `json:"records"`
	Bytes      int64   `json:"bytes"`
	InProgress bool    `json:"in_progress"`
	// Remaining is, while in progress, the changelog records left to
	// read: the partition's end less the read's position (the restore's
	// changelog lag; it stops at the checkpoint's header, often before).
	Remaining int64 `json:"remaining"`
}
