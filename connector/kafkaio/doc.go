// Package kafkaio is a Kafka source and sink on franz-go (work in
// progress).
package kafkaio

import (
	_ "github.com/twmb/franz-go/pkg/kadm"
	_ "github.com/twmb/franz-go/pkg/kfake"
	_ "github.com/twmb/franz-go/pkg/kgo"
)
