// Package eventset holds pending events in the total order of package event: [Calendar],
// a calendar queue that the sequential dispatcher keeps for every LP's events and each
// time-warp schedule queue keeps for the events of its LPs by default (it is the
// "calendar" type of package ltsf's schedule queues).
package eventset
