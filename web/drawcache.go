package web

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"sync"
)

// drawKey is a digest of everything a picture shows.
func drawKey(nodes []graphNode, edges []graphEdge, vertical bool) [32]byte {
	h := sha256.New()
	var buf [8]byte
	str := func(s string) {
		binary.BigEndian.PutUint64(buf[:], uint64(len(s)))
		h.Write(buf[:])
		h.Write([]byte(s))
	}
	flag := func(b bool) {
		if b {
			h.Write([]byte{1})
		} else {
			h.Write([]byte{0})
		}
	}
	flag(vertical)
	binary.BigEndian.PutUint64(buf[:], uint64(len(nodes)))
	h.Write(buf[:])
	for _, n := range nodes {
		h.Write(n.ID[:])
		str(n.Title)
		str(n.State)
		str(n.Href)
		flag(n.Focus)
		flag(n.Critical)
	}
	for _, e := range edges {
		h.Write(e.From[:])
		h.Write(e.To[:])
		flag(e.Child)
		flag(e.Critical)
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// drawCache keeps the most recently used pictures up to max bytes of SVG.
type drawCache struct {
	max   int
	size  int
	index map[[32]byte]*list.Element
	order *list.List // of *cached, most recent first
}

type cached struct {
	key [32]byte
	dr  drawing
}

func (c *drawCache) get(mu *sync.Mutex, key [32]byte) (drawing, bool) {
	mu.Lock()
	defer mu.Unlock()
	el, ok := c.index[key]
	if !ok {
		return drawing{}, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cached).dr, true
}

func (c *drawCache) put(mu *sync.Mutex, key [32]byte, dr drawing) {
	mu.Lock()
	defer mu.Unlock()
	if _, ok := c.index[key]; ok || len(dr.SVG) > c.max {
		return
	}
	c.index[key] = c.order.PushFront(&cached{key: key, dr: dr})
	c.size += len(dr.SVG)
	for c.size > c.max {
		last := c.order.Back()
		old := last.Value.(*cached)
		c.order.Remove(last)
		delete(c.index, old.key)
		c.size -= len(old.dr.SVG)
	}
}
