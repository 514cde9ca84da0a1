// Command walbytes reads the write-ahead logs of Badger's memtables (<store>/NNNNN.mem) and
// prints what was written into them, by key prefix: entries, key and value bytes, and the bytes
// each takes in the log and about what it takes in the memtable's skiplist arena. Task records
// (t/) are told apart by their version: version 1 is a create, a higher one a later write (the
// watcher's). Run it on a copy of a gateway's store taken while the gateway is paused (kill
// -STOP) or killed, since a clean Close writes the memtables out and deletes their logs:
//
//	go run ./bench/walbytes /tmp/copy/store/*.mem
//
// The log format (Badger v4, no encryption): a 20-byte file header, then one record per entry:
// meta and user-meta bytes, the key length, the value length and the expiry as uvarints, the key
// (with Badger's 8-byte version at its end), the value, and a CRC-32 (4 bytes). A zero key
// length ends the log. The figures are per task create: divided by the number of task records
// of version 1 in the logs, so they hold for logs written while tasks were created.
package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log"
	"os"
	"regexp"
	"sort"
	"strconv"
)

// logHeaderSize is the size of a memtable log's file header (Badger's vlogHeaderSize).
const logHeaderSize = 20

// nodeSize is about what a skiplist node takes in the arena besides its key and value (Badger
// v4's skl.node without its tower, and an average tower of 1.33 levels of 4 bytes), and
// valueExtra what a value takes besides its bytes (meta, user meta, the expiry as a uvarint).
const (
	nodeSize   = 24 + 6
	valueExtra = 2 + 5
)

// tally is what was written under one prefix.
type tally struct {
	entries, keyBytes, valueBytes, logBytes, arenaBytes int
}

func main() {
	log.SetFlags(0)
	if len(os.Args) < 2 {
		log.Fatal("usage: walbytes STORE/NNNNN.mem...")
	}
	byPrefix := map[string]*tally{}
	version := regexp.MustCompile(`"version":(\d+)}$`)
	creates := 0
	for _, name := range os.Args[1:] {
		data, err := os.ReadFile(name)
		if err != nil {
			log.Fatal(err)
		}
		for at := logHeaderSize; at+6 < len(data); {
			start := at
			meta := data[at]
			at += 2
			klen, n := binary.Uvarint(data[at:])
			at += n
			vlen, n2 := binary.Uvarint(data[at:])
			at += n2
			_, n3 := binary.Uvarint(data[at:])
			at += n3
			if klen < 8 || n <= 0 || n2 <= 0 || n3 <= 0 || at+int(klen)+int(vlen)+4 > len(data) {
				break
			}
			key := data[at : at+int(klen)-8]
			val := data[at+int(klen) : at+int(klen)+int(vlen)]
			at += int(klen) + int(vlen) + 4
			p := prefixOf(key)
			if meta&1 != 0 && p != "!badger!txn" {
				p += " (deletion)"
			}
			if p == "t/" {
				if v, ok := recordVersion(val, version); ok && v == 1 {
					p, creates = "t/ (create)", creates+1
				} else if ok {
					p = "t/ (later write)"
				}
			}
			t := byPrefix[p]
			if t == nil {
				t = &tally{}
				byPrefix[p] = t
			}
			t.entries++
			t.keyBytes += int(klen)
			t.valueBytes += int(vlen)
			t.logBytes += at - start
			if p != "!badger!txn" { // the commit marker goes to the log only
				t.arenaBytes += nodeSize + int(klen) + int(vlen) + valueExtra
			}
		}
	}
	printTallies(byPrefix, creates)
}

// recordVersion is the version of a task record: in the binary form (a first byte of 1, then the
// version as a uvarint: storage/badger_task_record.go) or in JSON, which ends with the version.
func recordVersion(val []byte, json *regexp.Regexp) (int, bool) {
	if len(val) > 1 && val[0] == 1 {
		v, n := binary.Uvarint(val[1:])
		return int(v), n > 0
	}
	if m := json.FindSubmatch(val); m != nil {
		v, err := strconv.Atoi(string(m[1]))
		return v, err == nil
	}
	return 0, false
}

// prefixOf is a key's prefix up to its first slash, or Badger's own key name, or the whole key.
func prefixOf(key []byte) string {
	if bytes.HasPrefix(key, []byte("!badger!")) {
		if i := bytes.IndexByte(key[8:], '!'); i >= 0 {
			return string(key[:8+i])
		}
		return string(key)
	}
	if i := bytes.IndexByte(key, '/'); i >= 0 && i < 4 {
		return string(key[:i+1])
	}
	return string(key)
}

func printTallies(byPrefix map[string]*tally, creates int) {
	names := make([]string, 0, len(byPrefix))
	var sum tally
	for p, t := range byPrefix {
		names = append(names, p)
		sum.entries += t.entries
		sum.keyBytes += t.keyBytes
		sum.valueBytes += t.valueBytes
		sum.logBytes += t.logBytes
		sum.arenaBytes += t.arenaBytes
	}
	sort.Slice(names, func(i, j int) bool { return byPrefix[names[i]].logBytes > byPrefix[names[j]].logBytes })
	per := float64(max(creates, 1))
	fmt.Printf("task creates (t/ records of version 1): %d; figures per create\n", creates)
	fmt.Printf("%-22s %9s %9s %9s %9s %9s\n", "prefix", "entries", "key B", "value B", "log B", "arena B")
	row := func(name string, t tally) {
		fmt.Printf("%-22s %9.2f %9.1f %9.1f %9.1f %9.1f\n", name, float64(t.entries)/per, float64(t.keyBytes)/per,
			float64(t.valueBytes)/per, float64(t.logBytes)/per, float64(t.arenaBytes)/per)
	}
	for _, p := range names {
		row(p, *byPrefix[p])
	}
	row("all", sum)
}
