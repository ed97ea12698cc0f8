package natsio

import (
	"github.com/weirstream/weir/connector"
)

// checkSource checks a job spec's nats source settings (the spec
// compiles nats.start, a value of its plan).
func checkSource(c connector.Checker) {
	if c.String("nats.stream") == "" {
		c.Report("nats.stream", "missing", "name the JetStream stream to read, such as ORDERS")
	}
}

// checkSink checks a job spec's nats sink settings.
func checkSink(c connector.Checker, _ string) {
	if c.String("subject") == "" {
		c.Report("subject", "missing", "name the subject results are published to; a JetStream stream must store it")
	}
}
