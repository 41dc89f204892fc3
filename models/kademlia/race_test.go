//go:build race

package kademlia

const raceEnabled = true
