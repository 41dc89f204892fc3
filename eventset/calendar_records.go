package eventset

// How a Calendar stores its events: records by value in chunks of its buckets, chunks in
// slabs linked by id, payloads by handle, and the sort slots of the current bucket.

import "github.com/warpedgo/warped/event"

// chunkLen is the number of events per chunk of a bucket.
const chunkLen = 32

// record is an event as the calendar stores it: the payload value is replaced by a
// handle, so records hold no pointers. The collector then has nothing to scan in the
// chunks, and copying a record needs no write barriers.
type record struct {
	recvTime, sendTime float64
	seq                uint64
	words              event.Words
	depth, sender      uint32
	receiver           uint32
	payload            uint32 // 1 + index in Calendar.payloads, or 0 for none
	anti               bool
	// stampHi and stamp are the high 16 and low 32 bits of Calendar.pushes when the record
	// was pushed (see Stamp): 48 bits fill the record's padding, so it stays 80 bytes.
	stampHi uint16
	stamp   uint32
}

// stamp48 returns r's stamp.
func (r *record) stamp48() uint64 { return uint64(r.stampHi)<<32 | uint64(r.stamp) }

// setStamp gives r stamp s.
func (r *record) setStamp(s uint64) { r.stampHi, r.stamp = uint16(s>>32), uint32(s) }

// key returns the record's sort key (as event.KeyOf).
func (r *record) key() event.Key {
	ss := r.seq << 1
	if !r.anti {
		ss |= 1
	}
	return event.Key{RecvTime: r.recvTime, SendTime: r.sendTime, Depth: r.depth, Sender: r.sender, SeqSign: ss}
}

// chunk is a fixed block of records; a bucket is a list of chunks. Records never move once
// stored, so the sorted slots can point at them, and a bucket grows without copying.
// Chunks of emptied buckets are reused, so memory follows the pending events.
type chunk struct {
	evs  [chunkLen]record
	n    int
	next uint32 // id of the next chunk of the bucket, or 0
}

// slabLen is the number of chunks allocated at once.
const slabLen = 64

// at returns the chunk with the given id, or nil for id 0.
func (c *Calendar) at(id uint32) *chunk {
	if id == 0 {
		return nil
	}
	return c.chunk(id)
}

// chunk returns the chunk with the given id.
func (c *Calendar) chunk(id uint32) *chunk {
	id--
	return &c.slabs[id/slabLen][id%slabLen]
}

// newChunk returns the id of an empty chunk, from the free stack or a new slab.
func (c *Calendar) newChunk() uint32 {
	if c.free == 0 {
		c.slabs = append(c.slabs, make([]chunk, slabLen))
		base := uint32(len(c.slabs)-1) * slabLen
		for i := slabLen; i >= 1; i-- { // ids base+1 .. base+slabLen, lowest on top
			c.slabs[len(c.slabs)-1][i-1].next = c.free
			c.free = base + uint32(i)
		}
	}
	id := c.free
	ch := c.chunk(id)
	c.free, ch.next = ch.next, 0
	return id
}

// bucket is a list of chunks (by id), filled from head to tail.
type bucket struct {
	head, tail uint32
	n          int
}

// slot is one event of the current bucket: its key but for the sequence number and sign,
// which decides nearly every comparison without reading the record, and where it is
// stored, for the rest. Models with integer times (PCS) hold thousands of events of one
// time in a bucket, and their zero-delay events share the send time too: a slot of the
// receive time alone sent most comparisons to the records, scattered in the bucket's
// chunks, which cost a quarter of PCS's run.
type slot struct {
	t, st float64 // receive and send time
	ds    uint64  // depth<<32 | sender: the key's next two fields, in their order
	e     *record
}

// slotOf returns the slot of record r.
func slotOf(r *record) slot {
	var s slot
	s.set(r)
	return s
}

// set makes s the slot of record r. It and the other writes of whole records and events
// on the hot path go field by field: a composite literal is built on the stack and then
// copied in 16-byte moves, which stall on forwarding from the smaller stores that built it.
func (s *slot) set(r *record) {
	s.t, s.st, s.ds, s.e = r.recvTime, r.sendTime, uint64(r.depth)<<32|uint64(r.sender), r
}

// appendSlot appends the slot of record r to *to.
func appendSlot(to *[]slot, r *record) {
	*to = append(*to, slot{})
	(*to)[len(*to)-1].set(r)
}

// sless reports whether slot a's event sorts before slot b's.
func sless(a, b *slot) bool {
	switch {
	case a.t != b.t:
		return a.t < b.t
	case a.st != b.st:
		return a.st < b.st
	case a.ds != b.ds:
		return a.ds < b.ds
	}
	return tailLess(a.e, b.e)
}

// tailLess orders two records whose keys agree up to the sender: by sequence number, then
// an anti-message before its positive twin.
func tailLess(a, b *record) bool {
	if a.seq != b.seq {
		return a.seq < b.seq
	}
	return a.anti && !b.anti
}

// payloadHandle keeps v aside and returns its handle for a record (0 for nil).
func (c *Calendar) payloadHandle(v any) uint32 {
	if v == nil {
		return 0
	}
	var h uint32
	if n := len(c.freeHandles); n > 0 {
		h = c.freeHandles[n-1]
		c.freeHandles = c.freeHandles[:n-1]
		c.payloads[h] = v
	} else {
		h = uint32(len(c.payloads))
		c.payloads = append(c.payloads, v)
	}
	return h + 1
}

// load fills dst from r and releases r's payload handle.
func (c *Calendar) load(dst *event.Event, r *record) {
	dst.RecvTime, dst.SendTime, dst.Seq = r.recvTime, r.sendTime, r.seq
	dst.Words = r.words // alone: in a tuple assignment it goes through the stack
	dst.Depth, dst.Sender, dst.Receiver, dst.Anti = r.depth, r.sender, r.receiver, r.anti
	dst.Payload = nil
	if r.payload != 0 {
		h := r.payload - 1
		dst.Payload = c.payloads[h]
		c.payloads[h] = nil
		c.freeHandles = append(c.freeHandles, h)
	}
}

// add appends a copy of r to bk and returns where it is stored.
func (c *Calendar) add(bk *bucket, r *record) *record {
	p := c.reserve(bk)
	*p = *r
	return p
}

// reserve appends a record slot to bk and returns it, for the caller to fill.
func (c *Calendar) reserve(bk *bucket) *record {
	var t *chunk
	if bk.tail != 0 {
		t = c.chunk(bk.tail)
	}
	if t == nil || t.n == chunkLen {
		id := c.newChunk()
		if t == nil {
			bk.head = id
		} else {
			t.next = id
		}
		bk.tail, t = id, c.chunk(id)
	}
	p := &t.evs[t.n]
	t.n++
	bk.n++
	return p
}

// release returns bk's chunks to the free stack and leaves bk empty.
func (c *Calendar) release(bk *bucket) {
	for id := bk.head; id != 0; {
		ch := c.chunk(id)
		ch.n = 0
		if id = ch.next; id == 0 {
			ch.next = c.free // the tail links to the old free stack
		}
	}
	if bk.head != 0 {
		c.free = bk.head
	}
	*bk = bucket{}
}
