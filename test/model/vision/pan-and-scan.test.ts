// Pan and scan's crop boxes, worked out by hand from transformers' Gemma3ImageProcessor.pan_and_scan
// (image_processing_gemma3.py): for a landscape image (width >= height), nothing when
// width / height < min_ratio; else n = floor(width / height + 0.5), n = min(n, floor(width /
// min_crop)), n clamped to [2, max_crops]; crop width ceil(width / n), the full height; nothing
// when the smaller crop side is under min_crop; crops at x = i · crop width, the last cut at the
// edge (a numpy slice). A portrait image the same along its height.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { PAN_AND_SCAN_DEFAULTS, cropImage, panAndScanBoxes } from '../../../src/model/vision/pan-and-scan.js';

const box = (x: number, y: number, width: number, height: number) => ({ x, y, width, height });

describe('pan and scan crop boxes (defaults: min crop 256, at most 4 crops, ratio 1.2)', () => {
  const cases: [string, number, number, ReturnType<typeof box>[]][] = [
    ['square: ratio 1 < 1.2', 896, 896, []],
    ['ratio 1.19 < 1.2', 1190, 1000, []],
    ['ratio 1.22: floor(1.72) = 1, raised to 2 crops of 550', 1100, 900, [box(0, 0, 550, 900), box(550, 0, 550, 900)]],
    ['ratio 1.5: floor(2.0) = 2 (half rounds up)', 1500, 1000, [box(0, 0, 750, 1000), box(750, 0, 750, 1000)]],
    ['ratio 2: floor(2.5) = 2, floor(1000 / 256) = 3', 1000, 500, [box(0, 0, 500, 500), box(500, 0, 500, 500)]],
    ['ratio 2.5: floor(3.0) = 3, ceil(2500 / 3) = 834, the last 832 wide', 2500, 1000, [box(0, 0, 834, 1000), box(834, 0, 834, 1000), box(1668, 0, 832, 1000)]],
    ['ratio 3.33: 3 crops of ceil(333.3) = 334, the last 332', 1000, 300, [box(0, 0, 334, 300), box(334, 0, 334, 300), box(668, 0, 332, 300)]],
    ['ratio 10: min(10, floor(2000 / 256) = 7) capped at 4, but a height of 200 < 256', 2000, 200, []],
    ['ratio 1.92: floor(500 / 256) = 1 raised to 2, crops 250 < 256', 500, 260, []],
    ['portrait ratio 2.5: 3 crops of 500 down the height', 600, 1500, [box(0, 0, 600, 500), box(0, 500, 600, 500), box(0, 1000, 600, 500)]],
    ['portrait ratio 2: floor(600 / 256) = 2', 300, 600, [box(0, 0, 300, 300), box(0, 300, 300, 300)]],
    ['ratio 6.2: 4 crops (the most), ceil(4096 / 4) = 1024', 4096, 660, [box(0, 0, 1024, 660), box(1024, 0, 1024, 660), box(2048, 0, 1024, 660), box(3072, 0, 1024, 660)]],
  ];
  for (const [name, w, h, want] of cases) {
    it(`${w}x${h}: ${name}`, () => assert.deepEqual(panAndScanBoxes(w, h, PAN_AND_SCAN_DEFAULTS), want));
  }

  it('the settings change the answer: min crop 16 splits the 97x53 test image into 49 + 48', () => {
    assert.deepEqual(panAndScanBoxes(97, 53, { minCropSize: 16, maxCrops: 4, minRatio: 1.2 }), [box(0, 0, 49, 53), box(49, 0, 48, 53)]);
    assert.deepEqual(panAndScanBoxes(97, 53, { minCropSize: 16, maxCrops: 4, minRatio: 2 }), []);
    assert.deepEqual(panAndScanBoxes(23, 31, { minCropSize: 16, maxCrops: 4, minRatio: 1.2 }), [box(0, 0, 23, 16), box(0, 16, 23, 15)]);
  });
});

describe('cropImage', () => {
  it('copies the box row by row', () => {
    // 3 × 2 image, pixel (x, y) = (10y + x, 100 + 10y + x, 200 + 10y + x)
    const data = new Uint8Array(3 * 2 * 3);
    for (let y = 0; y < 2; y++) for (let x = 0; x < 3; x++) data.set([10 * y + x, 100 + 10 * y + x, 200 + 10 * y + x], (y * 3 + x) * 3);
    const crop = cropImage({ width: 3, height: 2, data }, box(1, 0, 2, 2));
    assert.deepEqual([crop.width, crop.height], [2, 2]);
    assert.deepEqual([...crop.data], [1, 101, 201, 2, 102, 202, 11, 111, 211, 12, 112, 212]);
  });
});
