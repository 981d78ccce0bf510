package service

import (
	"os"
	"testing"

	"sortie/provision/node/agenttest"
)

// TestMain builds the node agent the tests' nodes run.
func TestMain(m *testing.M) { os.Exit(agenttest.Main(m)) }
