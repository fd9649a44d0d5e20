// A plain SystemVerilog bench (no cocotb, no Python at run time): the exact shared unit on the
// seed's schedule (period 0: vgpr, 128 blocks; period 1: sgpr, 64, and lds, 48, side by side),
// instantiated through the wrapper that `make verilog` generates, every port read and written
// by its named fields (status.vgpr, length.lds, ...). Its reference is its own: a scan of the
// blocks written here, not the Python model.
//
// tests/test_maxblock_verilog.py compiles it with Icarus (-g2012) and Verilator (--binary),
// defining BLOCK as the block's module name: the wrapper is `BLOCK_wrapper and the type of
// port p is `BLOCK_p_t. The run ends with a line "RESULT: PASS <checks>" or "RESULT: FAIL <errors> of <checks>".
// With +waves=<file> it dumps its waveforms there.

`timescale 1ns / 1ps

`define TYPE(port) `BLOCK``_``port``_t
`define WRAPPER(block) block``_wrapper

module shared_wrapper_bench;
  localparam int CLOCKS = 600;

  logic clk = 1'b0;
  logic rst = 1'b1;
  logic valid = 1'b0;
  logic enable = 1'b1;
  `TYPE(status) status;
  `TYPE(request) request;
  `TYPE(length) length;
  `TYPE(start) start;
  `TYPE(fit) fit;
  `TYPE(fit_start) fit_start;
  `TYPE(result_valid) result_valid;

  `WRAPPER(`BLOCK) dut (
    .clk(clk), .rst(rst),
    .status(status), .request(request), .valid(valid), .enable(enable),
    .length(length), .start(start), .fit(fit), .fit_start(fit_start),
    .result_valid(result_valid)
  );

  always #5 clk = ~clk;

  // The answer for one status word of `size` blocks (a free block reads 1): the longest free
  // run and its lowest start, and whether a run of `request` blocks exists and where the
  // lowest one starts (0 when none, or for a request of 0).
  typedef struct packed {
    int length;
    int start;
    bit fit;
    int fit_start;
  } answer_t;

  function automatic answer_t answer(input logic [127:0] word, input int size, input int request);
    answer_t result;
    int run = 0;
    result.length = 0;
    result.start = 0;
    result.fit = request == 0;
    result.fit_start = 0;
    for (int i = 0; i < size; i++) begin
      if (word[i]) begin
        run++;
        if (run > result.length) begin
          result.length = run;
          result.start = i - run + 1;
        end
        if (request != 0 && !result.fit && run >= request) begin
          result.fit = 1'b1;
          result.fit_start = i - run + 1;
        end
      end else begin
        run = 0;
      end
    end
    return result;
  endfunction

  // Random words with long and short free runs: alternating runs of random mean length.
  function automatic logic [127:0] random_word(input int size);
    logic [127:0] word = '0;
    int mean = 1 + $urandom % size;
    int position = 0;
    bit free = $urandom % 2;
    while (position < size) begin
      int run = 1 + $urandom % (2 * mean);
      for (int i = position; i < position + run && i < size; i++) word[i] = free;
      position += run;
      free = !free;
    end
    return word;
  endfunction

  int checks = 0;
  int errors = 0;

  task automatic expect_equal(input string what, input int actual, input int expected);
    checks++;
    if (actual !== expected) begin
      errors++;
      if (errors <= 10) $display("ERROR at %0t: %s is %0d, expected %0d", $time, what, actual,
                                 expected);
    end
  endtask

  answer_t vgpr_expected, sgpr_expected, lds_expected;
  int period = 0;
  bit served_vgpr, served_sgpr_lds;
  string wave_file;

  initial begin
    if ($value$plusargs("waves=%s", wave_file)) begin
      $dumpfile(wave_file);
      $dumpvars(0, shared_wrapper_bench);
    end
    status = '0;
    request = '0;
    repeat (2) @(posedge clk);
    #1 rst = 1'b0;
    for (int clock = 0; clock < CLOCKS; clock++) begin
      // Present a period's words (both periods' fields change; only the served ones count).
      status.vgpr = random_word(128);
      status.sgpr = random_word(64);
      status.lds = random_word(48);
      request.vgpr = $urandom % 130;
      request.sgpr = $urandom % 66;
      request.lds = $urandom % 50;
      if (request.lds > 48) request.lds = 48 + $urandom % 2;
      valid = ($urandom % 8) != 0;
      served_vgpr = valid && period == 0;
      served_sgpr_lds = valid && period == 1;
      vgpr_expected = answer(status.vgpr, 128, request.vgpr);
      sgpr_expected = answer(status.sgpr, 64, request.sgpr);
      lds_expected = answer(status.lds, 48, request.lds);
      @(posedge clk);
      #1;
      expect_equal("result_valid.vgpr", result_valid.vgpr, served_vgpr);
      expect_equal("result_valid.sgpr", result_valid.sgpr, served_sgpr_lds);
      expect_equal("result_valid.lds", result_valid.lds, served_sgpr_lds);
      if (served_vgpr) begin
        expect_equal("length.vgpr", length.vgpr, vgpr_expected.length);
        expect_equal("start.vgpr", start.vgpr, vgpr_expected.start);
        expect_equal("fit.vgpr", fit.vgpr, vgpr_expected.fit);
        expect_equal("fit_start.vgpr", fit_start.vgpr, vgpr_expected.fit_start);
      end
      if (served_sgpr_lds) begin
        expect_equal("length.sgpr", length.sgpr, sgpr_expected.length);
        expect_equal("start.sgpr", start.sgpr, sgpr_expected.start);
        expect_equal("fit.sgpr", fit.sgpr, sgpr_expected.fit);
        expect_equal("fit_start.sgpr", fit_start.sgpr, sgpr_expected.fit_start);
        expect_equal("length.lds", length.lds, lds_expected.length);
        expect_equal("start.lds", start.lds, lds_expected.start);
        expect_equal("fit.lds", fit.lds, lds_expected.fit);
        expect_equal("fit_start.lds", fit_start.lds, lds_expected.fit_start);
      end
      period = (period + 1) % 2;
    end
    if (errors == 0) $display("RESULT: PASS %0d", checks);
    else $display("RESULT: FAIL %0d of %0d", errors, checks);
    $finish;
  end
endmodule
