package main

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte(line))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, msg string) (string, error) {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(msg + "\n")); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return line, err
}

func TestLinkProxy(t *testing.T) {
	t.Parallel()
	p, err := startProxy("127.0.0.1:0", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	addr := p.ln.Addr().String()

	t.Run("OK", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if got, err := roundTrip(c, "ping"); err != nil || got != "ping\n" {
			t.Fatalf("round trip = %q, %v", got, err)
		}
	})

	t.Run("CutThenHeal", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := roundTrip(c, "before"); err != nil {
			t.Fatal(err)
		}
		p.cutLink()
		if got, err := roundTrip(c, "during"); err == nil {
			t.Fatalf("a connection survived the cut: %q", got)
		}
		c2, err := net.Dial("tcp", addr)
		if err == nil {
			if got, err := roundTrip(c2, "new"); err == nil {
				t.Fatalf("a new connection passed while cut: %q", got)
			}
			c2.Close()
		}
		p.heal()
		c3, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c3.Close()
		if got, err := roundTrip(c3, "after"); err != nil || got != "after\n" {
			t.Fatalf("after heal: %q, %v", got, err)
		}
	})

	t.Run("StallThenHeal", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		p.stall()
		got := make(chan string, 1)
		go func() { s, _ := roundTrip(c, "held"); got <- s }()
		p.heal()
		if s := <-got; s != "held\n" {
			t.Fatalf("after the stall: %q", s)
		}
	})
}
