package main

// The README promises this output; checked by hand there.
func Example() {
	main()
	// Output:
	// ring0: 3 tokens, last at 9
	// ring1: 3 tokens, last at 7
	// ring2: 3 tokens, last at 8
	// events: 9
}
