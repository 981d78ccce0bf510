package testenv

import (
	"encoding/xml"
	"strings"
	"testing"
)

const describeBody = `<?xml version="1.0" encoding="utf-8"?>
<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15"><reservationSet><item><reservationId>r-1</reservationId><instancesSet>` +
	`<item><blockDeviceMapping><item><deviceName>/dev/sda1</deviceName></item></blockDeviceMapping><stateReason><code/><message/></stateReason>` +
	`<instanceId>i-aaa</instanceId><instanceState><code>16</code><name>running</name></instanceState></item>` +
	`<item><instanceId>i-bbb</instanceId><instanceState><code>16</code><name>running</name></instanceState></item>` +
	`</instancesSet></item></reservationSet></DescribeInstancesResponse>`

type parsed struct {
	Instances []struct {
		ID     string `xml:"instanceId"`
		State  string `xml:"instanceState>name"`
		Code   int    `xml:"instanceState>code"`
		Reason string `xml:"stateReason>code"`
		Device string `xml:"blockDeviceMapping>item>deviceName"`
	} `xml:"reservationSet>item>instancesSet>item"`
}

func TestRewriteInstances(t *testing.T) {
	marks := map[string]instanceMark{
		"i-aaa": {state: "terminated", stateCode: 48, reasonCode: "Server.SpotInstanceTermination", reasonMsg: "a & b"},
		"i-bbb": {state: "stopped", stateCode: 80, reasonCode: "Client.UserInitiatedShutdown"},
	}
	out, err := rewriteInstances([]byte(describeBody), marks)
	if err != nil {
		t.Fatal(err)
	}
	var got parsed
	if err := xml.Unmarshal(out, &got); err != nil {
		t.Fatalf("rewritten XML does not parse: %v\n%s", err, out)
	}
	if len(got.Instances) != 2 {
		t.Fatalf("instances %+v", got.Instances)
	}
	a, b := got.Instances[0], got.Instances[1]
	if a.ID != "i-aaa" || a.State != "terminated" || a.Code != 48 || a.Reason != "Server.SpotInstanceTermination" || a.Device != "/dev/sda1" {
		t.Errorf("i-aaa = %+v", a)
	}
	// i-bbb had no stateReason: one is added.
	if b.ID != "i-bbb" || b.State != "stopped" || b.Code != 80 || b.Reason != "Client.UserInitiatedShutdown" {
		t.Errorf("i-bbb = %+v", b)
	}
	if !strings.Contains(string(out), "a &amp; b") {
		t.Error("message not escaped")
	}
	same, err := rewriteInstances([]byte(describeBody), map[string]instanceMark{"i-zzz": marks["i-aaa"]})
	if err != nil || string(same) != describeBody {
		t.Errorf("unmarked instances changed:\n%s", same)
	}
}
