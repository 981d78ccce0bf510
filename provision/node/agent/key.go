package agent

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// KeySize is the size in bytes of the key the controller gives an agent at
// start: the agent tags its exit code record with it, and the controller
// takes no record whose tag does not verify.
const KeySize = 32

// Tag is the record's tag: HMAC-SHA256, with the node's key, of the phase,
// the code and whether a stop came first ("-" or "stop"), in hex. The
// node's key is its own (the controller derives one per node of an
// attempt), so a record is good on that node and for that attempt only.
func Tag(key []byte, phase string, code int, how string) string {
	m := hmac.New(sha256.New, key)
	io.WriteString(m, "sortie exit_code v1\x00"+phase+"\x00"+strconv.Itoa(code)+"\x00"+how)
	return hex.EncodeToString(m.Sum(nil))
}

// CheckTag says whether tag is the record's tag under key, in constant
// time.
func CheckTag(key []byte, phase string, code int, how, tag string) bool {
	got, err := hex.DecodeString(tag)
	if err != nil {
		return false
	}
	want, _ := hex.DecodeString(Tag(key, phase, code, how))
	return hmac.Equal(got, want)
}

// NodeKey derives node rank's key from an attempt's key, so that the
// record of one node of an attempt is not good on another.
func NodeKey(attemptKey []byte, rank int) []byte {
	m := hmac.New(sha256.New, attemptKey)
	io.WriteString(m, "sortie node key v1\x00"+strconv.Itoa(rank))
	return m.Sum(nil)
}

// ReadKey reads the key a starter gives the agent on its stdin: one line,
// the key in hex. Nothing else is read.
func ReadKey(r io.Reader) ([]byte, error) {
	line, err := bufio.NewReaderSize(io.LimitReader(r, 2*KeySize+1), 2*KeySize+1).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read the node's key: %w", err)
	}
	key, err := hex.DecodeString(strings.TrimSuffix(line, "\n"))
	if err != nil || len(key) != KeySize {
		return nil, fmt.Errorf("read the node's key: want %d bytes in hex on one line", KeySize)
	}
	return key, nil
}
