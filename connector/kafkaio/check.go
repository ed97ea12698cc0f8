package kafkaio

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/weirstream/weir/connector"
)

// checkSource checks a job spec's kafka source settings (the spec
// compiles kafka.start, a value of its plan).
func checkSource(c connector.Checker) {
	checkBrokers(c, "kafka.brokers")
	if c.String("kafka.topic") == "" {
		c.Report("kafka.topic", "missing", "name the topic to read, such as orders")
	}
	checkSASL(c, "kafka.sasl")
}

// checkSink checks a job spec's kafka sink settings and gives the marker
// topic its default.
func checkSink(c connector.Checker, _ string) {
	checkBrokers(c, "brokers")
	if topic := c.String("topic"); topic == "" {
		c.Report("topic", "missing", "name the topic for results, such as order-stats")
	} else {
		c.Default("marker_topic", topic+"-weir-checkpoints")
	}
	checkSASL(c, "sasl")
}

func checkBrokers(c connector.Checker, field string) {
	bs := c.Strings(field)
	if len(bs) == 0 {
		c.Report(field, "missing", "list the seed brokers, such as [127.0.0.1:9092]")
	}
	for i, b := range bs {
		host, port, ok := strings.Cut(b, ":")
		if n, err := strconv.Atoi(port); !ok || host == "" || err != nil || n <= 0 || n > 65535 {
			c.Report(fmt.Sprintf("%s[%d]", field, i), fmt.Sprintf("%q is not host:port", b), "such as 127.0.0.1:9092")
		}
	}
}

func checkSASL(c connector.Checker, field string) {
	if !c.Set(field) {
		return
	}
	c.OneOf(field+".mechanism", "plain", "scram-sha-256", "scram-sha-512")
	if c.String(field+".user") == "" {
		c.Report(field+".user", "missing", "give the user name")
	}
}
