'use strict';
// prng.cjs - mulberry32, a small seeded PRNG: prng(seed) returns a function giving numbers in
// [0, 1), so that every run of a randomized test or of the generator makes the same values.

function prng(seed)
{
	let a = seed >>> 0;

	return () => {
		a = (a + 0x6D2B79F5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

module.exports = { prng };
